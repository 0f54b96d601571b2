# ocr tests
