"""dialscore's offline training package (PyTorch). The service never imports this package."""
