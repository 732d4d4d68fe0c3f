pragma circom 2.0.0;

// A circuit whose assertion fails for some inputs (x must not be 5), for the
// error path of the witness calculator; it also logs, as circuits do.
template Guarded() {
    signal input x;
    signal output y;
    log("x is", x);
    assert(x != 5);
    y <== x * x;
}

component main = Guarded();
