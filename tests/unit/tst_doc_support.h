// Shared helper of the doc tests: the shipped presets (resources/presets), loaded once. Header-only,
// test code only.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "core/doc/preset.h"
#include "tests/support/lector_test.h"

namespace lector::test::doc {

inline const std::vector<lector::doc::Preset>& presets()
{
    static const std::vector<lector::doc::Preset> all = [] {
        auto p = lector::doc::loadPresets(LECTOR_PRESETS_DIR);
        if (!p.ok()) throw std::runtime_error(p.error().message);
        return std::move(p).value();
    }();
    return all;
}

inline const lector::doc::Preset& preset(const std::string& id)
{
    const lector::doc::Preset* p = lector::doc::findPreset(presets(), id);
    if (!p) lector::test::fail(__FILE__, __LINE__, "no preset " + id);
    return *p;
}

}  // namespace lector::test::doc
