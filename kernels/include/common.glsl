// Shared helpers for rdrr compute kernels (GLSL 450, Vulkan 1.2, SPIR-V 1.5).
//
// Workgroup reductions live in reduce.glsl (include it after the local_size layout).
#ifndef RDRR_COMMON_GLSL
#define RDRR_COMMON_GLSL

// Linear workgroup index of a grid folded into x and y (x * y may exceed the work; callers bound-check).
uint folded_group_index() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }

// f16 bits (low 16 bits of h) -> f32, exact.
float half_bits_to_float(uint h) { return unpackHalf2x16(h).x; }

// Sign-extends the byte at bit offset `shift` of w.
int sbyte(uint w, uint shift) { return bitfieldExtract(int(w), int(shift), 8); }
uint ubyte(uint w, uint shift) { return bitfieldExtract(w, int(shift), 8); }

#endif
