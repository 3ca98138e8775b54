// Float pairs (hi + lo, |lo| <= ulp(hi) / 2): sums and products that keep about 48 bits, for the
// shaders whose CPU counterparts accumulate in double. precise keeps the compiler from simplifying
// the rounding errors away.

// x + y of two float pairs, renormalised (Knuth's two-sum of the high parts, then Dekker's
// fast-two-sum).
vec2 pair_add(vec2 x, vec2 y) {
    precise float s = x.x + y.x;
    precise float b = s - x.x;
    precise float e = (x.x - (s - b)) + (y.x - b);
    precise float lo = e + (x.y + y.y);
    precise float hi = s + lo;
    precise float rest = lo - (hi - s);
    return vec2(hi, rest);
}

// a * b as a float pair, exactly (Dekker's product of Veltkamp halves; a device's fma need not be
// fused, so it is not relied on). Assumes |a|, |b| < 2^115 so that the splits do not overflow.
vec2 pair_product(float a, float b) {
    precise float p = a * b;
    precise float ca = 4097.0 * a, cb = 4097.0 * b;
    precise float ah = ca - (ca - a), bh = cb - (cb - b);
    precise float al = a - ah, bl = b - bh;
    precise float e = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
    return vec2(p, e);
}

// hi + lo renormalised when |hi| >= |lo| (Dekker's fast-two-sum).
vec2 pair_renormalize(float hi, float lo) {
    precise float s = hi + lo;
    precise float rest = lo - (s - hi);
    return vec2(s, rest);
}

vec2 pair_neg(vec2 x) { return -x; }

vec2 pair_mul(vec2 x, vec2 y) {
    vec2 p = pair_product(x.x, y.x);
    precise float lo = p.y + (x.x * y.y + x.y * y.x);
    return pair_renormalize(p.x, lo);
}

// x / y: a float quotient, corrected once by the pair remainder.
vec2 pair_div(vec2 x, vec2 y) {
    float q = x.x / y.x;
    vec2 r = pair_add(x, pair_neg(pair_mul(vec2(q, 0.0), y)));
    return pair_renormalize(q, r.x / y.x);
}

// sqrt(x) for x > 0: a float root, corrected once by Newton's step on the pair remainder.
vec2 pair_sqrt(vec2 x) {
    float s = sqrt(x.x);
    vec2 r = pair_add(x, pair_neg(pair_product(s, s)));
    return pair_renormalize(s, r.x / (2.0 * s));
}
