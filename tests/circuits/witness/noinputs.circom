pragma circom 2.0.0;

// A main component with no inputs at all (input.json is {}), that logs.
template NoInputs() {
    signal output o;
    signal output p[2];
    o <== 7;
    p[0] <== 3;
    p[1] <-- 5 * 9;
    log("no inputs", o);
}

component main = NoInputs();
