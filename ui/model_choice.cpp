#include "ui/model_choice.h"

#include <QCoreApplication>
#include <QThread>

#include <algorithm>

#include "ui/settings.h"

namespace lector::ui {

QList<ModelChoice> allModelChoices() { return {ModelChoice::PpocrCpu, ModelChoice::PpocrCuda, ModelChoice::Hunyuan}; }

QString modelChoiceLabel(ModelChoice choice)
{
    switch (choice) {
    case ModelChoice::PpocrCpu: return QCoreApplication::translate("ModelChoice", "PP-OCRv4 (CPU)");
    case ModelChoice::PpocrCuda: return QCoreApplication::translate("ModelChoice", "PP-OCRv4 (CUDA)");
    case ModelChoice::Hunyuan: return QCoreApplication::translate("ModelChoice", "HunyuanOCR 1.0");
    }
    return {};
}

ModelChoice modelChoiceFromSettings(const Settings& settings)
{
    if (settings.model() == QLatin1String("hunyuan-ocr")) return ModelChoice::Hunyuan;
    return settings.device() == QLatin1String("cuda") ? ModelChoice::PpocrCuda : ModelChoice::PpocrCpu;
}

void storeModelChoice(Settings& settings, ModelChoice choice)
{
    switch (choice) {
    case ModelChoice::PpocrCpu:
        settings.setValue(Settings::Key::Model, QStringLiteral("ppocr-v4"));
        settings.setValue(Settings::Key::Device, QStringLiteral("cpu"));
        break;
    case ModelChoice::PpocrCuda:
        settings.setValue(Settings::Key::Model, QStringLiteral("ppocr-v4"));
        settings.setValue(Settings::Key::Device, QStringLiteral("cuda"));
        break;
    case ModelChoice::Hunyuan:
        settings.setValue(Settings::Key::Model, QStringLiteral("hunyuan-ocr"));
        break;
    }
}

engine::EngineConfig engineConfigFor(ModelChoice choice, const Settings& settings)
{
    engine::EngineConfig c;
    // Leave one core to the GUI thread and the decoders: an engine spinning on every core makes the
    // desktop stutter (style.md §6.5: the GUI thread never waits).
    c.threads = std::max(1, QThread::idealThreadCount() - 1);
    switch (choice) {
    case ModelChoice::PpocrCpu:
        c.model = "ppocr-v4";
        c.device = "cpu";
        break;
    case ModelChoice::PpocrCuda:
        c.model = "ppocr-v4";
        c.device = "cuda";
        break;
    case ModelChoice::Hunyuan:
        c.model = "hunyuan-ocr";
        c.modelDir = settings.hunyuanDir().toStdString();
        c.device = settings.device().toStdString();
        c.dtype = engineDtype(settings.dtype()).toStdString();
        break;
    }
    return c;
}

bool isVisionLanguage(ModelChoice choice) { return choice == ModelChoice::Hunyuan; }

QString describeEngine(const engine::EngineInfo& info)
{
    if (info.model.empty()) return QCoreApplication::translate("ModelChoice", "no model");
    QString model = QString::fromStdString(info.model);
    if (info.model == "ppocr-v4") model = QStringLiteral("PP-OCRv4");
    else if (info.model.rfind("hunyuan", 0) == 0) model = QStringLiteral("HunyuanOCR");
    return QStringLiteral("%1 · %2 · %3")
        .arg(model, QString::fromStdString(info.device), QString::fromStdString(info.dtype));
}

}  // namespace lector::ui
