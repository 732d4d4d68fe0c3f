pragma circom 2.0.0;

// No public signal at all (nPublic = 0): knowledge of a, b with a*b*a = 36.
// The proof binds nothing but the circuit; IC has the single point IC_0.
template NoPublic() {
    signal input a;
    signal input b;
    signal ab;
    ab <== a * b;
    ab * a === 36;
}

component main = NoPublic();
