// Activation functions with the CPU backend's formulas (src/cpu/kernels/elementwise.cpp); NaN
// inputs give NaN unless a function says otherwise.
#define NAN_F32 uintBitsToFloat(0x7fc00000u)
#define INF_F32 uintBitsToFloat(0x7f800000u)

float exp_clamped(float x) { return exp(clamp(x, -105.0, 89.0)); }
float sigmoid_of(float x) { return 1.0 / (1.0 + exp(clamp(-x, -105.0, 89.0))); }
float tanh_of(float x) {
    // 1 - 2 / (e^(2x) + 1) saturates to +-1 instead of overflowing to NaN.
    float t = 1.0 - 2.0 / (exp(clamp(2.0 * x, -89.0, 89.0)) + 1.0);
    return isnan(x) ? x : t;
}
float silu_of(float x) { return isnan(x) ? x : x * sigmoid_of(x); }
// x / (1 + e^(-k x)): SWIGLU_OAI's gate for k = alpha.
float x_sigmoid_of(float x, float k) { return isnan(x) ? x : x / (1.0 + exp_clamped(-k * x)); }
float gelu_of(float x) {
    float inner = 0.7978845608028654 * (0.044715 * x * x * x + x);
    return isnan(x) ? x : 0.5 * x * (1.0 + tanh_of(inner));
}
float gelu_quick_of(float x) { return isnan(x) ? x : x * sigmoid_of(1.702 * x); }

// e^x - 1 without the cancellation of exp(x) - 1 near 0 (Kahan: (u - 1) x / log u, u = e^x), the
// argument clamped to [-105, 89] as the CPU's.
float expm1_of(float x) {
    float c = clamp(x, -105.0, 89.0);
    float u = exp(c);
    if (u == 1.0) return c;
    float um1 = u - 1.0;
    if (um1 == -1.0) return -1.0;
    if (isinf(u)) return u;
    return um1 * c / log(u);
}
// log(1 + y) without the cancellation of log(1 + y) for small y (y >= 0 here).
float log1p_of(float y) {
    float u = 1.0 + y;
    if (u == 1.0) return y;
    if (isinf(u)) return u;
    return log(u) * y / (u - 1.0);
}
// erfc by the Chebyshev fit of Press et al. (Numerical Recipes 6.2), as the CPU computes it.
float erfc_of(float z) {
    const float P[10] = float[10](-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807,
                                  -1.13520398, 1.48851587, -0.82215223, 0.17087277);
    float a = abs(z);
    float t = 1.0 / (0.5 * a + 1.0);
    float p = P[9];
    for (int i = 8; i >= 0; --i) p = p * t + P[i];
    float e = t * exp_clamped(p - a * a);
    return z < 0.0 ? 2.0 - e : e;
}
float gelu_erf_of(float x) { return isnan(x) ? x : 0.5 * x * erfc_of(x * -0.7071067811865476); }
// min(1, max(0, (x + 3) / 6)); NaN gives 0.
float hardsigmoid_of(float x) {
    float t = (x + 3.0) / 6.0;
    float lo = t > 0.0 ? t : 0.0;
    return lo < 1.0 ? lo : 1.0;
}
// log with the C library's special values (log 0 = -inf, log of a negative = NaN); positive
// subnormals from their bits (m 2^-149), since the device may flush them to zero.
float log_of(float x) {
    uint bits = floatBitsToUint(x);
    if (bits > 0u && bits < 0x00800000u) return log(float(bits)) - 149.0 * 0.6931471805599453;
    return x > 0.0 ? (isinf(x) ? x : log(x)) : x == 0.0 ? -INF_F32 : NAN_F32;
}
// Half away from zero (roundf).
float round_half_away(float x) {
    float r = trunc(x);
    return abs(x - r) >= 0.5 ? r + (x < 0.0 ? -1.0 : 1.0) : r;
}
