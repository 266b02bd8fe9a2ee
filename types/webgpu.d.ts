// WebGPU's types for Tessera's declarations, TypeScript 6 and later.
//
// dist/src/engine/Gpu.d.ts uses WebGPU's global types (GPUDevice, GPUBuffer, …) and
// references "tessera/webgpu" for them (`preserve="true"`, so the reference survives
// into the emitted declaration). package.json's `exports` resolve that to this file for
// TypeScript 6 and later, whose `lib.dom` declares WebGPU itself: loading @webgpu/types
// beside it would declare every WebGPU name twice (`skipLibCheck: false` then fails with
// "Duplicate identifier 'GPUTextureFormat'" and the like). TypeScript 5, whose `lib.dom`
// has no WebGPU, gets ./webgpu-ts5.d.ts, which references @webgpu/types.
//
// A project without "dom" in its `lib` that writes GPU kernels adds "@webgpu/types" to
// its `types` (Tessera's own tsconfig.json does).
export {}
