// AppContext: the GUI's composition root. Owns the services for the application's life, in the
// order they must die: MainWindow first, then the ModelController, then the EngineBridge (which shuts
// the engine down, joining its thread), then Settings. Passes references; no singletons.
// Created on the GUI thread in main(), after QApplication.
#pragma once

#include <QString>

#include <memory>
#include <vector>

#include "core/doc/preset.h"

namespace lector::ui {
class EngineBridge;
class MainWindow;
class ModelController;
class Settings;
}  // namespace lector::ui

namespace lector::app {

class AppContext {
public:
    AppContext();
    ~AppContext();

    // Shows the window and starts loading the model; files given on the command line are queued.
    void start(const QStringList& files);
    ui::MainWindow& window() { return *m_window; }

private:
    std::unique_ptr<ui::Settings> m_settings;
    std::unique_ptr<ui::EngineBridge> m_bridge;
    std::unique_ptr<ui::ModelController> m_models;
    std::unique_ptr<ui::MainWindow> m_window;
    QString m_presetError;
};

// The presets in resources/presets/, or the error that stopped them loading.
std::vector<doc::Preset> loadPresetsOrEmpty(QString* error);

}  // namespace lector::app
