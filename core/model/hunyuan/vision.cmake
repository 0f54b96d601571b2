# Vision side sources: config, weights, preprocessing, vision tower, merger.
