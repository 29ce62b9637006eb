"""The model store: assembles the served models from their manifests, components and scorers."""
