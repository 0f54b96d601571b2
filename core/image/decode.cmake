# Image decoding and EXIF orientation sources.
