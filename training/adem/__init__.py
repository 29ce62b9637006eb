"""ADEM (Lowe et al. 2017): a linear scoring head over PCA-reduced hierarchical-encoder vectors."""
