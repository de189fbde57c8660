// GELU in BLOOM's tanh form and in the exact erf form (MPT), and erf itself, which GLSL
// lacks. All in fp32.
#ifndef VKF_GELU_GLSL
#define VKF_GELU_GLSL

// 0.5 x (1 + tanh(u)) == x / (1 + exp(-2u)): one exp, and no inf/inf for large |u| (exp
// overflowing to +inf gives the correct -0 for very negative x).
float gelu_tanh(float x) {
    const float k = 0.7978845608028654; // sqrt(2 / pi)
    const float u = k * (x + 0.044715 * x * x * x);
    return x / (1.0 + exp(-2.0 * u));
}

// erfc(a) for a >= 1, as exp(-a^2) g(a). g(a) = erfc(a) exp(a^2) is smooth and slowly
// varying (about 1 / (a sqrt(pi)) for large a), so it is fitted by a polynomial in
// w = s / a + o, which maps 1/a of each interval onto [-1, 1]. Coefficients are weighted
// least-squares fits (relative error) made for vkformer in double precision against
// libm's erfc and checked after rounding to fp32: relative error of g under 3e-7.
// Past a = 10, erfc(a) < 2.1e-45 is 0 in fp32.
float erfc_tail(float a) {
    if (a >= 10.0) {
        return 0.0;
    }
    float g;
    if (a < 2.5) { // a in [1, 2.5): degree 7
        const float w = 3.33333325 / a - 2.33333325;
        g = -4.62909975e-06;
        g = g * w + 2.34287818e-05;
        g = g * w - 7.38209346e-05;
        g = g * w + 7.22651966e-05;
        g = g * w + 0.00130834128;
        g = g * w - 0.0145743834;
        g = g * w + 0.107158706;
        g = g * w + 0.333673656;
    } else { // a in [2.5, 10): degree 6
        const float w = 6.66666651 / a - 1.66666663;
        g = -2.47510548e-06;
        g = g * w - 6.37456833e-06;
        g = g * w + 0.000108205102;
        g = g * w - 0.000381418242;
        g = g * w - 0.00363154849;
        g = g * w + 0.0777204409;
        g = g * w + 0.136999473;
    }
    return exp(-a * a) * g;
}

// erf(x), absolute error about 1e-7 (a few fp32 ulps of erf) over all x.
// |x| < 1: erf(x) = x + x R(x^2), R a degree-6 fit of erf(x)/x - 1 (close to the Taylor
// series, whose terms alternate; writing it as x + x R keeps the rounding of the large
// leading term exact). |x| >= 1: erf(x) = sign(x) (1 - erfc(|x|)).
float vkf_erf(float x) {
    const float a = abs(x);
    if (a < 1.0) {
        const float t = x * x;
        float r = 8.00695052e-05;
        r = r * t - 0.000805377087;
        r = r * t + 0.00519295968;
        r = r * t - 0.0268560704;
        r = r * t + 0.112836346;
        r = r * t - 0.376126289;
        r = r * t + 0.128379166;
        return x + x * r;
    }
    return sign(x) * (1.0 - erfc_tail(a));
}

// 0.5 x (1 + erf(x / sqrt(2))). For x <= -sqrt(2), 1 + erf(z) is computed as erfc(|z|)
// directly, keeping the small negative tail accurate instead of cancelling to 0.
float gelu_erf(float x) {
    const float z = x * 0.7071067811865476;
    if (z <= -1.0) {
        return 0.5 * x * erfc_tail(-z);
    }
    return 0.5 * x * (1.0 + vkf_erf(z));
}

#endif
