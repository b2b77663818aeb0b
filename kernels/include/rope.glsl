// Rotary embedding arithmetic shared by rope.comp and kv_append.comp (ROPE), so both rotate bit for bit alike.
// theta = (pos * freq_scale) * inv_freq; a rotated pair (a, b) becomes (a cos - b sin, a sin + b cos), with cos
// and sin times mscale (YaRN / LongRoPE attention factor; 1 otherwise).
#ifndef RDRR_ROPE_GLSL
#define RDRR_ROPE_GLSL

// Computed inverse frequency of pair p: theta_base^(-2p / n_rot).
float rope_inv_freq(uint p, uint n_rot, float theta_base) { return pow(theta_base, -2.0 * float(p) / float(n_rot)); }

// (cos theta, sin theta) * mscale at position pos.
vec2 rope_cos_sin(int pos, float inv_freq, float freq_scale, float mscale) {
  const float theta = float(pos) * freq_scale * inv_freq;
  return vec2(cos(theta), sin(theta)) * mscale;
}

vec2 rope_rotate(float a, float b, vec2 cs) { return vec2(a * cs.x - b * cs.y, a * cs.y + b * cs.x); }

#endif
