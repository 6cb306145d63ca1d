//! The CPM material as the scene names it (`Cpm(name: …, params: (…))`): its scene form and
//! validation ([`CpmParams::resolve`], errors placed at the field as written). CPM pairs are
//! mixed by `CpmPhys::new`, not by the frictional laws' `MixKind` (`law/mix.rs`).

use super::{CpmMat, CpmParams};
use crate::contact::law::material::LawMaterial;
use crate::error::Result;
use crate::scene::ctx::Ctx;
use serde::{Deserialize, Serialize};

/// The scene form of a `Cpm` material.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpmSpec {
    pub name: String,
    #[serde(default)]
    pub params: Box<CpmParams>,
}

/// A named CPM material (the parameters, with their defaults, are [`CpmMat`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpmNamed {
    pub name: String,
    pub params: CpmMat,
}

impl LawMaterial for CpmNamed {
    type Mix = std::convert::Infallible;
    type Spec = CpmSpec;

    fn spec_name(spec: &CpmSpec) -> &str {
        &spec.name
    }

    fn from_spec(ctx: &Ctx, p: &str, c: &CpmSpec, _first: Option<&Self>) -> Result<Self> {
        let params = c.params.resolve().map_err(|(field, e)| {
            // placed at the field as written (demhpc name or Yade alias)
            let at = CpmParams::names(field)
                .iter()
                .map(|n| format!("{p}.params.{n}"))
                .find(|q| ctx.locs.has(q));
            match at {
                Some(at) => ctx.err(&at, e),
                None if field.is_empty() => ctx.err(&format!("{p}.params"), e),
                None => ctx.err(&format!("{p}.params"), format!("{field}: {e}")),
            }
        })?;
        Ok(CpmNamed {
            name: c.name.clone(),
            params,
        })
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn density(&self) -> f64 {
        self.params.density
    }

    fn young(&self) -> Option<f64> {
        Some(self.params.young)
    }
}
