// Workgroup reduction. Include after the shader's local_size layout (the scratch is sized by it).
// Subgroup arithmetic first, then one shared-memory slot per subgroup, so it is correct for any subgroup
// size (lavapipe 8, NVIDIA 32, AMD 32/64) and sums in a fixed order (deterministic on a given device).
// Call workgroup_sum / workgroup_max from uniform control flow (every invocation of the workgroup).
#ifndef RDRR_REDUCE_GLSL
#define RDRR_REDUCE_GLSL

#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

shared float rdrr_reduce_scratch[gl_WorkGroupSize.x * gl_WorkGroupSize.y];

// Sum of v over the whole workgroup; every invocation receives the same value. When every subgroup is full
// and has a lane per subgroup (NVIDIA: up to 1024 invocations), the subgroup sums are added by one more
// subgroupAdd in every subgroup (identical inputs in identical lanes: the same value everywhere) instead of
// gl_NumSubgroups dependent shared-memory reads.
float workgroup_sum(float v) {
  const float s = subgroupAdd(v);
  barrier();  // a previous call may still be reading the scratch
  if (subgroupElect()) rdrr_reduce_scratch[gl_SubgroupID] = s;
  barrier();
  const uint wg_size = gl_WorkGroupSize.x * gl_WorkGroupSize.y;
  if (wg_size % gl_SubgroupSize == 0u && gl_NumSubgroups <= gl_SubgroupSize) {
    const uint lane = gl_SubgroupInvocationID;
    return subgroupAdd(lane < gl_NumSubgroups ? rdrr_reduce_scratch[lane] : 0.0);
  }
  float total = 0.0;
  for (uint i = 0u; i < gl_NumSubgroups; ++i) total += rdrr_reduce_scratch[i];
  return total;
}

// Maximum of v over the whole workgroup (NaN-free inputs); every invocation receives the same value.
float workgroup_max(float v) {
  const float s = subgroupMax(v);
  barrier();
  if (subgroupElect()) rdrr_reduce_scratch[gl_SubgroupID] = s;
  barrier();
  float m = rdrr_reduce_scratch[0];
  for (uint i = 1u; i < gl_NumSubgroups; ++i) m = max(m, rdrr_reduce_scratch[i]);
  return m;
}

#endif
