"""ExPriL itself (Sections 3-4): the source's bins, Pb. 1's importance weights, Pb. 2's label
estimate and their solver, the networks h_t and their training, and random Fourier features."""
