// ModelController: decides which model the EngineBridge loads: the one in the settings at start-up,
// and a new one when the user picks another in the model selector or changes the HunyuanOCR folder.
// HunyuanOCR folders are checked first (checkHunyuanFolder) so a missing file is named before any
// load is tried. Remembers the last error for the preset panel. GUI thread only.
#pragma once

#include <QObject>
#include <QString>

#include <QCoroTask>

#include "ui/model_choice.h"

namespace lector::ui {

class EngineBridge;
class Settings;

class ModelController : public QObject {
    Q_OBJECT
public:
    ModelController(Settings& settings, EngineBridge& bridge, QObject* parent = nullptr);

    // Loads the model the settings name (start-up, after the settings dialog).
    void loadFromSettings();
    // Stores the choice and loads it.
    void choose(ModelChoice choice);
    ModelChoice current() const { return m_choice; }
    QString lastError() const { return m_error; }
    // Awaitable form of choose(): resolves when that load finished (ok or not).
    QCoro::Task<bool> chooseAndWait(ModelChoice choice);

Q_SIGNALS:
    void stateChanged();   // loading started/finished, error changed

private:
    QCoro::Task<bool> load(ModelChoice choice);

    Settings& m_settings;
    EngineBridge& m_bridge;
    ModelChoice m_choice = ModelChoice::PpocrCpu;
    QString m_error;
};

}  // namespace lector::ui
