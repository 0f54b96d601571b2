# Text side sources: decoder, XD-RoPE, position ids, prompt layout, KV cache, generation.
