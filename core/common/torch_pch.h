// Precompiled header for lector_core and the tests: ATen plus the standard headers every file uses.
// Only build speed depends on this list; every file still includes what it uses.
#pragma once
#include <ATen/ATen.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
