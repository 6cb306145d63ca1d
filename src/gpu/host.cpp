// The GPU kernels compiled for the host (build.rs): each kernel a loop over its thread
// indices (DEM_KERNEL in kernels/step.cu), so CI runs the device's arithmetic without a GPU.
#include "kernels/step.cu"

// Layout of DemParams for src/gpu/params.rs's test: size, then the offsets listed there.
extern "C" void dem_host_layout(uint64_t* out) {
    out[0] = sizeof(DemParams);
    out[1] = offsetof(DemParams, xwstate);
    out[2] = offsetof(DemParams, dt);
    out[3] = offsetof(DemParams, shift);
    out[4] = offsetof(DemParams, n);
    out[5] = offsetof(DemParams, store_phys);
    out[6] = offsetof(DemParams, walls);
    out[7] = sizeof(DemWall);
    out[8] = sizeof(D4);
}
