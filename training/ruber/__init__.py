"""RUBER (Tao et al. 2018): the unreferenced scorer trained by negative sampling, calibration, export."""
