// Activation functions with the CPU backend's formulas; NaN inputs give NaN.
float sigmoid_of(float x) { return 1.0 / (1.0 + exp(clamp(-x, -105.0, 89.0))); }
float tanh_of(float x) {
    // 1 - 2 / (e^(2x) + 1) saturates to +-1 instead of overflowing to NaN.
    float t = 1.0 - 2.0 / (exp(clamp(2.0 * x, -89.0, 89.0)) + 1.0);
    return isnan(x) ? x : t;
}
float silu_of(float x) { return isnan(x) ? x : x * sigmoid_of(x); }
float gelu_of(float x) {
    float inner = 0.7978845608028654 * (0.044715 * x * x * x + x);
    return isnan(x) ? x : 0.5 * x * (1.0 + tanh_of(inner));
}
float gelu_quick_of(float x) { return isnan(x) ? x : x * sigmoid_of(1.702 * x); }
