pragma circom 2.2.0;

// Bus inputs (circom 2.2): a bus, an array of buses holding a bus array.
bus Point() {
    signal x;
    signal y;
}

bus Line() {
    Point p[2];
    signal w;
}

template Buses() {
    input Point a;
    input Line l[2];
    signal input k;
    output Point o;
    o.x <== a.x * k + l[0].p[1].x;
    o.y <== a.y + l[1].w * l[1].p[0].y;
}

component main = Buses();
