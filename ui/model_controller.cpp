#include "ui/model_controller.h"

#include <QPointer>

#include "ui/engine_bridge.h"
#include "ui/model_folder.h"
#include "ui/settings.h"

namespace lector::ui {

ModelController::ModelController(Settings& settings, EngineBridge& bridge, QObject* parent)
    : QObject(parent), m_settings(settings), m_bridge(bridge)
{
    m_choice = modelChoiceFromSettings(m_settings);
    connect(&m_bridge, &EngineBridge::loadingChanged, this, &ModelController::stateChanged);
    connect(&m_bridge, &EngineBridge::modelChanged, this, &ModelController::stateChanged);
}

void ModelController::loadFromSettings() { load(modelChoiceFromSettings(m_settings)); }

void ModelController::choose(ModelChoice choice)
{
    storeModelChoice(m_settings, choice);
    load(choice);
}

QCoro::Task<bool> ModelController::chooseAndWait(ModelChoice choice)
{
    storeModelChoice(m_settings, choice);
    const bool ok = co_await load(choice);
    co_return ok;
}

QCoro::Task<bool> ModelController::load(ModelChoice choice)
{
    m_choice = choice;
    m_error.clear();
    if (choice == ModelChoice::Hunyuan) {
        const ModelFolderCheck check = checkHunyuanFolder(m_settings.hunyuanDir());
        if (!check.ok) {
            m_error = check.message;
            Q_EMIT stateChanged();
            co_return false;
        }
    }
    Q_EMIT stateChanged();
    QPointer<ModelController> self(this);
    // The argument is a named local: GCC 12 destroys temporaries inside a co_await expression twice.
    const engine::EngineConfig config = engineConfigFor(choice, m_settings);
    const Result<void> loaded = co_await m_bridge.load(config);
    if (!self) co_return false;
    if (!loaded && loaded.error().code == "superseded") co_return false;
    m_error = loaded ? QString() : QString::fromStdString(loaded.error().message);
    Q_EMIT stateChanged();
    co_return loaded.ok();
}

}  // namespace lector::ui
