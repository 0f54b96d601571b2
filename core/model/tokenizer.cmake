# Tokenizer sources (owner: tokenizer work).
