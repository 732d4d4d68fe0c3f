pragma circom 2.0.0;

// Array inputs of several shapes: a 2x3 matrix, a vector, a scalar.
// Outputs the matrix-vector product plus k times the vector's sum.
template MatVec(rows, cols) {
    signal input m[rows][cols];
    signal input v[cols];
    signal input k;
    signal output out[rows];
    signal prod[rows][cols];
    var s = 0;
    for (var j = 0; j < cols; j++) {
        s += v[j];
    }
    signal ks;
    ks <== k * s;
    for (var i = 0; i < rows; i++) {
        var acc = 0;
        for (var j = 0; j < cols; j++) {
            prod[i][j] <== m[i][j] * v[j];
            acc += prod[i][j];
        }
        out[i] <== acc + ks;
    }
}

component main {public [v]} = MatVec(2, 3);
