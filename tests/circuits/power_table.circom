pragma circom 2.0.0;

// A circuit of more than 2^12 constraints (domain 2^13) with few wires, so
// its committed snarkjs artifacts stay small: a table p[k] = g^k, k = 1..N,
// computed by hints and checked by every product p[i] * p[j] === p[i+j]
// with 1 <= i <= j, i + j <= N (N^2/4 constraints over N wires).  Public:
// the output y = g^(N+1) and the input g (nPublic = 2).
template PowerTable(N) {
    signal input g;
    signal output y;
    signal p[N + 1];
    p[1] <== g;  // removed by circom's simplification: p[1] is g's wire
    for (var k = 2; k <= N; k++) {
        p[k] <-- p[k - 1] * g;
    }
    for (var i = 1; 2 * i <= N; i++) {
        for (var j = i; i + j <= N; j++) {
            p[i] * p[j] === p[i + j];
        }
    }
    y <== p[N] * g;
}

component main {public [g]} = PowerTable(128);
