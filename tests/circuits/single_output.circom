pragma circom 2.0.0;

// A single public signal, an output: y = x^3 + x + 5 with x private
// (the classic "cubic" example; nPublic = 1, no public input).
template SingleOutput() {
    signal input x;
    signal output y;
    signal x2;
    x2 <== x * x;
    y <== x2 * x + x + 5;
}

component main = SingleOutput();
