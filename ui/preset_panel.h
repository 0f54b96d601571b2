// PresetPanel: choose the model (PP-OCRv4 CPU/CUDA, HunyuanOCR) and the preset (Text, ID card,
// Invoice, Receipt, Translate, Parse document, Subtitles, Custom prompt ...) from resources/presets/,
// with the preset's options (fields, target language, custom prompt) and the prompt that will be sent.
// When the loaded model cannot run the preset it says so (and offers to switch) instead of letting
// requests fail silently. Builds the engine::Request template; no other logic. GUI thread only.
#pragma once

#include <QWidget>

#include <vector>

#include "core/doc/preset.h"
#include "core/engine/engine.h"
#include "ui/model_choice.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QFormLayout;

namespace lector::ui {

class PresetPanel : public QWidget {
    Q_OBJECT
public:
    explicit PresetPanel(std::vector<doc::Preset> presets, QWidget* parent = nullptr);

    // --- model ---
    void setModelChoice(ModelChoice choice);   // does not emit modelChoiceChanged
    ModelChoice modelChoice() const;
    // What is loaded now; `error` non-empty: the last load failed.
    void setEngineState(bool loaded, bool loading, const engine::EngineInfo& info, const QString& error = {});

    // --- preset ---
    bool setCurrentPreset(const QString& id);  // false when unknown
    QString currentPresetId() const;
    const doc::Preset* currentPreset() const;
    const std::vector<doc::Preset>& presets() const { return m_presets; }
    void setTranslateTarget(const QString& language);
    QString translateTarget() const;
    void setCustomPrompt(const QString& prompt);
    QString customPrompt() const;
    void setFieldNames(const QStringList& names);
    QStringList fieldNames() const;

    // True when the loaded model supports the current preset (and a custom prompt is given).
    bool canRun() const;
    // The request every new recognition starts from (image and name are filled in by the caller).
    engine::Request requestTemplate() const;
    // The prompt a prompt-driven model would get; for PP-OCR a note on what it does instead.
    QString promptPreview() const;

    QComboBox* presetCombo() const { return m_preset; }
    QComboBox* modelCombo() const { return m_model; }

Q_SIGNALS:
    void presetChanged(const QString& id);
    void modelChoiceChanged(lector::ui::ModelChoice choice);
    void rerunRequested();
    void settingsRequested();
    void optionsChanged();   // target language, fields or custom prompt edited

protected:
    void changeEvent(QEvent* event) override;

private:
    void retranslate();
    void fillPresetNames();
    void onPresetIndexChanged();
    void updateOptions();
    void updateNotice();
    std::string language() const;  // "zh" / "en" for preset names

    std::vector<doc::Preset> m_presets;
    QComboBox* m_model;
    QLabel* m_modelLabel;
    QLabel* m_modelState;
    QComboBox* m_preset;
    QLabel* m_presetLabel;
    QLabel* m_description;
    QLabel* m_targetLabel;
    QComboBox* m_target;
    QLabel* m_fieldsLabel;
    QLineEdit* m_fields;
    QLabel* m_promptLabel;
    QPlainTextEdit* m_custom;
    QLabel* m_preview;
    QLabel* m_notice;
    QPushButton* m_switchModel;
    QPushButton* m_rerun;
    bool m_loaded = false;
    bool m_loading = false;
    engine::EngineInfo m_info;
    QString m_loadError;
};

}  // namespace lector::ui
