# hunyuan tests
