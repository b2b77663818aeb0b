// Gated-activation functions of the feed-forward blocks (glu.comp, gemv_q4k.comp ROUTE_GLU): ACT 0 SiLU, 1 GELU-tanh.
#ifndef RDRR_ACT_GLSL
#define RDRR_ACT_GLSL

float silu(float g) { return g / (1.0 + exp(-g)); }

float gelu_tanh(float g) {
  const float kSqrt2OverPi = 0.7978845608028654;
  // tanh saturates to +-1 in f32 well before |u| = 10; clamping avoids inf/inf inside some tanh lowerings.
  const float u = clamp(kSqrt2OverPi * (g + 0.044715 * g * g * g), -10.0, 10.0);
  return 0.5 * g * (1.0 + tanh(u));
}

// act(g) for the activation code (0 SiLU, 1 GELU-tanh).
float gated_act(uint act, float g) { return act == 1u ? gelu_tanh(g) : silu(g); }

#endif
