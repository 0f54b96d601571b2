# hunyuan vision tests
