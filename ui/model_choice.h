// Model choices offered in the model selector (PP-OCRv4 on CPU or CUDA, HunyuanOCR) and how each
// maps to an EngineConfig from the settings. Pure functions; GUI thread (they read Settings).
#pragma once

#include <QList>
#include <QString>

#include "core/engine/engine.h"

namespace lector::ui {

class Settings;

enum class ModelChoice { PpocrCpu, PpocrCuda, Hunyuan };

QList<ModelChoice> allModelChoices();
QString modelChoiceLabel(ModelChoice choice);         // translated, for the selector
ModelChoice modelChoiceFromSettings(const Settings& settings);
// Writes model + device of the choice into the settings.
void storeModelChoice(Settings& settings, ModelChoice choice);
// The engine configuration for the choice (HunyuanOCR: folder, device and dtype from the settings).
engine::EngineConfig engineConfigFor(ModelChoice choice, const Settings& settings);
bool isVisionLanguage(ModelChoice choice);

// "PP-OCRv4 · cpu · float32" for the status bar.
QString describeEngine(const engine::EngineInfo& info);

}  // namespace lector::ui
