// WebGPU's types for Tessera's declarations, TypeScript 5 (see ./webgpu.d.ts): its
// `lib.dom` has no WebGPU, so the global types come from @webgpu/types, a dependency of
// Tessera.
/// <reference types="@webgpu/types" />
export {}
