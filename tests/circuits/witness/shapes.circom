pragma circom 2.1.5;

// circom 2 language features in one small circuit: a zero-size input array,
// signal arrays of 3 and 4 dimensions, component arrays, anonymous
// components, tags, assert in a function, log() of strings and values, and
// public inputs named in main.
function weighted(x) {
    assert(x < 1000);
    var r = 0;
    for (var i = 0; i < 3; i++) {
        r += x * i;
    }
    return r;
}

template Sq() {
    signal input in;
    signal output out;
    out <== in * in;
}

template Keep() {
    signal input {binary} in;
    signal output {binary} out;
    out <== in;
}

template Shapes(N) {
    signal input none[N];
    signal input a[2][3][2];
    signal input b[2][2][2][2];
    signal input k;
    signal output o[2][3][2];
    signal output s;
    signal output q;
    component sq[2][3][2];
    for (var i = 0; i < 2; i++) {
        for (var j = 0; j < 3; j++) {
            for (var l = 0; l < 2; l++) {
                sq[i][j][l] = Sq();
                sq[i][j][l].in <== a[i][j][l];
                o[i][j][l] <== sq[i][j][l].out;
            }
        }
    }
    var acc = 0;
    for (var i = 0; i < N; i++) {
        acc += none[i];
    }
    for (var i = 0; i < 2; i++) {
        for (var j = 0; j < 2; j++) {
            for (var l = 0; l < 2; l++) {
                for (var m = 0; m < 2; m++) {
                    acc += b[i][j][l][m] * (i + 1);
                }
            }
        }
    }
    signal kk <== Sq()(k);
    s <== acc + kk;
    var c = weighted(k);
    log("k", k, "weighted", c, "s", s);
    log();
    signal {binary} one;
    one <== 1;
    signal kept <== Keep()(one);
    signal t <== Sq()(a[0][0][0] + c);
    q <== t + kept;
}

component main {public [k, b]} = Shapes(0);
