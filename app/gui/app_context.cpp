#include "app/gui/app_context.h"

#include "ui/engine_bridge.h"
#include "ui/input_controller.h"
#include "ui/language.h"
#include "ui/main_window.h"
#include "ui/model_controller.h"
#include "ui/settings.h"

namespace lector::app {

std::vector<doc::Preset> loadPresetsOrEmpty(QString* error)
{
    auto presets = doc::loadPresets(doc::defaultPresetsDir());
    if (!presets) {
        *error = QString::fromStdString(presets.error().message);
        return {};
    }
    return std::move(presets.value());
}

AppContext::AppContext()
{
    m_settings = std::make_unique<ui::Settings>();
    ui::installLanguage(m_settings->uiLanguage());
    m_bridge = std::make_unique<ui::EngineBridge>();
    m_models = std::make_unique<ui::ModelController>(*m_settings, *m_bridge);
    m_window = std::make_unique<ui::MainWindow>(*m_settings, *m_bridge, *m_models, loadPresetsOrEmpty(&m_presetError));
}

AppContext::~AppContext()
{
    m_window.reset();
    m_models.reset();
    m_bridge.reset();   // Engine::shutdown(): cancels what is pending, joins the engine thread
    m_settings.reset();
}

void AppContext::start(const QStringList& files)
{
    m_window->show();
    if (!m_presetError.isEmpty()) m_window->warnPresetsUnreadable(m_presetError);
    m_models->loadFromSettings();
    if (!files.isEmpty()) m_window->input().addPaths(files);
}

}  // namespace lector::app
