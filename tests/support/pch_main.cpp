// The program that builds the test programs' shared precompiled header (glass_test_compile in the
// top-level CMakeLists.txt); it runs nothing.
int main() { return 0; }
