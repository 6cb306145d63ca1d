//! What the GPU step runs (issue 34's scope): spheres, plane walls (fixed and moving), the
//! frictional laws with their histories, gravity, Cundall damping, periodic axes, blocked
//! DOFs. Anything else is refused at validation, at the field that asks for it (exit 2).

use super::params::MAX_WALLS;
use crate::error::{Error, Result};
use crate::scene::locate::Locations;
use crate::scene::Scene;
use crate::sim::Simulation;

/// The first field of `scene` the GPU step cannot run, as `(field path, what)`.
fn unsupported(scene: &Scene) -> Option<(String, String)> {
    for (k, m) in scene.materials.iter().enumerate() {
        if !super::material_supported(m) {
            return Some((format!("materials[{k}]"), "CPM materials".into()));
        }
    }
    let on = |b: bool, path: &str, what: &str| b.then(|| (path.to_string(), what.to_string()));
    on(
        !scene.rolling.is_off(),
        "rolling",
        "rolling and twisting resistance",
    )
    .or_else(|| on(!scene.meshes.is_empty(), "meshes", "triangle meshes"))
    .or_else(|| {
        on(
            scene.strainer.is_some(),
            "strainer",
            "the strain controller",
        )
    })
    .or_else(|| {
        let inlets = scene
            .flow
            .iter()
            .any(|f| matches!(f, crate::engines::FlowEngine::Inlet(_)));
        on(inlets, "inlets", "inlets")
    })
    .or_else(|| on(!scene.flow.is_empty(), "outlets", "outlets"))
    .or_else(|| on(scene.cell.is_some(), "cell", "the deforming periodic cell"))
    .or_else(|| on(scene.servo_walls.is_some(), "servo_walls", "servo walls"))
    .or_else(|| on(scene.energy, "energy", "energy tracking"))
    .or_else(|| on(scene.protocol.is_some(), "stages", "protocols (stages)"))
    .or_else(|| {
        on(
            scene.walls.len() > MAX_WALLS,
            "walls",
            &format!("more than {MAX_WALLS} walls"),
        )
    })
    .or_else(|| {
        let k = scene.walls.iter().position(|w| w.plane_normal().is_none());
        k.map(|k| (format!("walls[{k}]"), "walls other than planes".to_string()))
    })
}

/// Refuse (exit 2, `file:line:col`) a scene the GPU step cannot run.
pub fn check_scene(scene: &Scene) -> Result<()> {
    let engine = scene
        .engines
        .first()
        .map(|(path, e)| (path.clone(), format!("the engine {}", e.kind())));
    let Some((path, what)) = unsupported(scene).or(engine) else {
        return Ok(());
    };
    let locs = Locations::scan(&scene.text);
    let (line, col) = locs.find(&path);
    Err(Error::Scene {
        file: scene.file.display().to_string(),
        line,
        col,
        msg: format!("{path}: {what}: not supported on GPU yet (run without --gpu)"),
    })
}

/// The same for a simulation handed to the GPU step (a restart's stored scene included).
pub fn check_simulation(sim: &Simulation) -> Result<()> {
    let what = if sim.dec.n_ranks() > 1 {
        Some("more than one MPI rank (the GPU step runs on one rank and one GPU for now)")
    } else if sim.cpm.is_some() {
        Some("CPM materials")
    } else if !sim.mix.rolling().is_off() {
        Some("rolling and twisting resistance")
    } else if !sim.meshes.is_empty() {
        Some("triangle meshes")
    } else if sim
        .engines
        .has::<crate::engines::strainer::UniaxialStrainer>()
    {
        Some("the strain controller")
    } else if sim.engines.has::<crate::engines::Flow>() {
        Some("inlets and outlets")
    } else if sim.engines.has::<crate::engines::cell::CellEngine>() || sim.domain.cell.deformed {
        Some("the deforming periodic cell")
    } else if sim.engines.has::<crate::engines::servo_wall::ServoWalls>() {
        Some("servo walls")
    } else if sim.engines.has::<crate::engines::energy::EnergyBook>() {
        Some("energy tracking")
    } else if !sim.engines.is_empty() {
        Some("engines (controllers, sources, forces)")
    } else if sim.walls.len() > MAX_WALLS {
        Some("more than 16 walls")
    } else if sim.walls.iter().any(|w| w.plane_normal().is_none()) {
        Some("walls other than planes")
    } else {
        None
    };
    match what {
        Some(w) => Err(Error::Input(format!("{w}: not supported on GPU yet"))),
        None => Ok(()),
    }
}
