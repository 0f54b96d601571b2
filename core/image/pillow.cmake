# Pillow-exact resize / smart resize sources.
