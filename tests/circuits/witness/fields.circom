pragma circom 2.0.6;
pragma custom_templates;

// Field arithmetic that depends on the prime (negative inputs, inverses,
// integer division) and a custom template, compiled for every prime circom knows.
template custom CMul() {
    signal input a;
    signal input b;
    signal output c;
    c <-- a * b;
}

template Fields() {
    signal input a;
    signal input b;
    signal output c;
    signal output d;
    signal output inv;
    component m = CMul();
    m.a <== a;
    m.b <== b;
    c <== m.c + 1;
    d <-- a \ 3;
    inv <-- 1 / b;
    inv * b === 1;
    log("a", a, "inv", inv);
}

component main = Fields();
