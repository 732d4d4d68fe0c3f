pragma circom 2.0.0;

include "circomlib/circuits/bitify.circom";
include "circomlib/circuits/comparators.circom";

// Prove that you know the solution of a 4x4 sudoku without revealing it.
//
// Public signals (public.json order): the 16 cells of the puzzle, row by
// row, 0 for a blank.  Private: the 16 cells of the solution.  The proof
// says: every solution cell is in 1..4, agrees with every given cell of the
// puzzle, and the 4 rows, 4 columns and 4 2x2 boxes hold no value twice.
template Sudoku4x4() {
    signal input puzzle[16];
    signal input solution[16];

    // 1 <= solution[i] <= 4: solution[i] - 1 fits in two bits.
    component inRange[16];
    for (var i = 0; i < 16; i++) {
        inRange[i] = Num2Bits(2);
        inRange[i].in <== solution[i] - 1;
    }

    // A given cell (puzzle[i] != 0) must equal the solution there.
    for (var i = 0; i < 16; i++) {
        puzzle[i] * (solution[i] - puzzle[i]) === 0;
    }

    // The 12 groups of 4 cells (rows, columns, boxes) as cell indices.
    var groups[12][4];
    for (var k = 0; k < 4; k++) {
        for (var j = 0; j < 4; j++) {
            groups[k][j] = 4 * k + j;                                       // row k
            groups[4 + k][j] = 4 * j + k;                                   // column k
            groups[8 + k][j] = 8 * (k \ 2) + 2 * (k % 2) + 4 * (j \ 2) + (j % 2);  // box k
        }
    }

    // No two cells of a group are equal: 6 pairs per group.
    component same[12][6];
    for (var g = 0; g < 12; g++) {
        var p = 0;
        for (var a = 0; a < 4; a++) {
            for (var b = a + 1; b < 4; b++) {
                same[g][p] = IsEqual();
                same[g][p].in[0] <== solution[groups[g][a]];
                same[g][p].in[1] <== solution[groups[g][b]];
                same[g][p].out === 0;
                p++;
            }
        }
    }
}

component main {public [puzzle]} = Sudoku4x4();
