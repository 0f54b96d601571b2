# doc tests
