"""Where the heavy algebra runs: the seam (base), the choice (select), the CPU and GPU backends."""
