// SettingsDialog: edits the persisted Settings. General (language, default preset, auto-copy, watch
// clipboard), HunyuanOCR (folder, validated as you type and naming the missing file, "Get
// HunyuanOCR…", device, dtype) and batch defaults. Values are written on OK only. GUI thread only.
#pragma once

#include <QDialog>

#include <vector>

#include "core/doc/preset.h"

class QCheckBox;
class QComboBox;
class QDialogButtonBox;
class QGroupBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QToolButton;

namespace lector::ui {

class Settings;

class SettingsDialog : public QDialog {
    Q_OBJECT
public:
    SettingsDialog(Settings& settings, const std::vector<doc::Preset>& presets, QWidget* parent = nullptr);

    // Writes the dialog's values into Settings (what OK does).
    void apply();
    void setHunyuanDir(const QString& dir);
    QString hunyuanValidationText() const;
    bool hunyuanFolderValid() const { return m_hunyuanOk; }

Q_SIGNALS:
    void downloadRequested(const QString& targetDir);

protected:
    void changeEvent(QEvent* event) override;

private:
    void retranslate();
    void load();
    void validateFolder();

    Settings& m_settings;
    const std::vector<doc::Preset>& m_presets;
    bool m_hunyuanOk = false;

    QGroupBox* m_general;
    QLabel* m_languageLabel;
    QComboBox* m_language;
    QLabel* m_presetLabel;
    QComboBox* m_preset;
    QCheckBox* m_autoCopy;
    QCheckBox* m_watch;
    QGroupBox* m_model;
    QLabel* m_folderLabel;
    QLineEdit* m_folder;
    QToolButton* m_browse;
    QLabel* m_folderState;
    QPushButton* m_download;
    QLabel* m_deviceLabel;
    QComboBox* m_device;
    QLabel* m_dtypeLabel;
    QComboBox* m_dtype;
    QGroupBox* m_batch;
    QCheckBox* m_recursive;
    QLabel* m_typesLabel;
    QLineEdit* m_types;
    QLabel* m_formatLabel;
    QComboBox* m_format;
    QLabel* m_restartNote;
    QDialogButtonBox* m_buttons;
};

}  // namespace lector::ui
