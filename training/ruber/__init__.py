"""RUBER (Tao et al. 2018): its unreferenced scorer on GloVe BiGRU encoders (ruber) and on MiniLM (ruber-minilm),
trained by negative sampling; calibration, export, cards."""
