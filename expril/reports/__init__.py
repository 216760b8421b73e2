"""What people read: the reproduction's tables and figure, its fidelity to the paper, the
comparison with the rivals, the identification of open readings and the ambiguity report."""
