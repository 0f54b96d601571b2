# hunyuan text tests
