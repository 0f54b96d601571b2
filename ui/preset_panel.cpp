#include "ui/preset_panel.h"

#include <QComboBox>
#include <QEvent>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QVBoxLayout>

namespace lector::ui {
namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

QStringList splitFields(const QString& text)
{
    QStringList out;
    for (QString part : text.split(QRegularExpression(QStringLiteral("[,，;；]")), Qt::SkipEmptyParts)) {
        part = part.trimmed();
        if (!part.isEmpty()) out << part;
    }
    return out;
}

QStringList defaultFieldNames(const doc::Preset& p)
{
    QStringList names;
    for (const auto& f : p.fields) names << qs(f.name);
    return names;
}

// A printed label to show as an example, in the script of the UI language when the preset has one.
QString exampleLabel(const doc::Preset& p, const std::string& lang)
{
    QString fallback;
    for (const auto& f : p.fields) {
        for (const auto& l : f.labels) {
            const QString label = qs(l);
            bool ascii = true;
            for (QChar c : label) ascii = ascii && c.unicode() < 128;
            if (ascii == (lang == "en")) return label;
            if (fallback.isEmpty()) fallback = label;
        }
    }
    return fallback.isEmpty() ? qs(p.fields.front().name) : fallback;
}

}  // namespace

PresetPanel::PresetPanel(std::vector<doc::Preset> presets, QWidget* parent)
    : QWidget(parent), m_presets(std::move(presets))
{
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(8, 8, 8, 8);
    auto* form = new QFormLayout;
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    outer->addLayout(form);

    m_model = new QComboBox(this);
    for (ModelChoice c : allModelChoices()) m_model->addItem(QString(), static_cast<int>(c));
    m_modelLabel = new QLabel(this);
    m_modelLabel->setBuddy(m_model);
    form->addRow(m_modelLabel, m_model);
    m_modelState = new QLabel(this);
    m_modelState->setWordWrap(true);
    form->addRow(QString(), m_modelState);

    m_preset = new QComboBox(this);
    m_preset->setMaxVisibleItems(12);
    m_presetLabel = new QLabel(this);
    m_presetLabel->setBuddy(m_preset);
    form->addRow(m_presetLabel, m_preset);
    m_description = new QLabel(this);
    m_description->setWordWrap(true);
    m_description->setForegroundRole(QPalette::PlaceholderText);
    form->addRow(QString(), m_description);

    m_target = new QComboBox(this);
    m_target->setEditable(true);
    m_targetLabel = new QLabel(this);
    form->addRow(m_targetLabel, m_target);

    m_fields = new QLineEdit(this);
    m_fieldsLabel = new QLabel(this);
    form->addRow(m_fieldsLabel, m_fields);

    m_custom = new QPlainTextEdit(this);
    m_custom->setMaximumHeight(90);
    m_promptLabel = new QLabel(this);
    form->addRow(m_promptLabel, m_custom);

    m_preview = new QLabel(this);
    m_preview->setWordWrap(true);
    m_preview->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_preview->setStyleSheet(QStringLiteral("QLabel { background: palette(base); border: 1px solid palette(mid); border-radius: 4px; padding: 6px; }"));
    outer->addWidget(m_preview);

    m_notice = new QLabel(this);
    m_notice->setWordWrap(true);
    m_notice->setStyleSheet(QStringLiteral("QLabel { background: #fff4d6; color: #6b4a00; border-radius: 4px; padding: 6px; }"));
    outer->addWidget(m_notice);
    auto* buttons = new QHBoxLayout;
    m_switchModel = new QPushButton(this);
    m_rerun = new QPushButton(this);
    m_rerun->setIcon(QIcon(QStringLiteral(":/icons/run.svg")));
    buttons->addWidget(m_switchModel);
    buttons->addStretch(1);
    buttons->addWidget(m_rerun);
    outer->addLayout(buttons);
    outer->addStretch(1);

    connect(m_model, &QComboBox::currentIndexChanged, this, [this] {
        updateNotice();
        Q_EMIT modelChoiceChanged(modelChoice());
    });
    connect(m_preset, &QComboBox::currentIndexChanged, this, &PresetPanel::onPresetIndexChanged);
    connect(m_target, &QComboBox::currentTextChanged, this, [this] {
        updateNotice();
        Q_EMIT optionsChanged();
    });
    connect(m_fields, &QLineEdit::textChanged, this, [this] {
        updateNotice();
        Q_EMIT optionsChanged();
    });
    connect(m_custom, &QPlainTextEdit::textChanged, this, [this] {
        updateNotice();
        Q_EMIT optionsChanged();
    });
    connect(m_rerun, &QPushButton::clicked, this, &PresetPanel::rerunRequested);
    connect(m_switchModel, &QPushButton::clicked, this, [this] {
        if (m_loadError.isEmpty() && modelChoice() != ModelChoice::Hunyuan) {
            setModelChoice(ModelChoice::Hunyuan);
            Q_EMIT modelChoiceChanged(ModelChoice::Hunyuan);
        } else {
            Q_EMIT settingsRequested();
        }
    });

    retranslate();
    fillPresetNames();
    onPresetIndexChanged();
}

std::string PresetPanel::language() const
{
    return QLocale().language() == QLocale::Chinese ? "zh" : "en";
}

void PresetPanel::retranslate()
{
    m_modelLabel->setText(tr("&Model"));
    m_presetLabel->setText(tr("&Preset"));
    m_targetLabel->setText(tr("Translate to"));
    m_fieldsLabel->setText(tr("Fields"));
    m_fields->setPlaceholderText(tr("Comma-separated field names"));
    m_promptLabel->setText(tr("Prompt"));
    m_custom->setPlaceholderText(tr("Describe what to read, e.g. “List every price in this photo as JSON.”"));
    m_rerun->setText(tr("Recognise again"));
    m_rerun->setToolTip(tr("Run the current image again with this preset (F5)"));
    for (int i = 0; i < m_model->count(); ++i)
        m_model->setItemText(i, modelChoiceLabel(static_cast<ModelChoice>(m_model->itemData(i).toInt())));
    fillPresetNames();
    updateOptions();
    updateNotice();
}

void PresetPanel::changeEvent(QEvent* event)
{
    if (event->type() == QEvent::LanguageChange) retranslate();
    QWidget::changeEvent(event);
}

void PresetPanel::fillPresetNames()
{
    const std::string lang = language();
    const QString current = currentPresetId();
    const QSignalBlocker block(m_preset);
    m_preset->clear();
    for (const auto& p : m_presets) {
        m_preset->addItem(qs(p.name.in(lang)), qs(p.id));
        m_preset->setItemData(m_preset->count() - 1, qs(p.description.in(lang)), Qt::ToolTipRole);
    }
    const int idx = m_preset->findData(current);
    m_preset->setCurrentIndex(idx >= 0 ? idx : 0);
}

void PresetPanel::setModelChoice(ModelChoice choice)
{
    const QSignalBlocker block(m_model);
    m_model->setCurrentIndex(m_model->findData(static_cast<int>(choice)));
    updateNotice();
}

ModelChoice PresetPanel::modelChoice() const { return static_cast<ModelChoice>(m_model->currentData().toInt()); }

void PresetPanel::setEngineState(bool loaded, bool loading, const engine::EngineInfo& info, const QString& error)
{
    m_loaded = loaded;
    m_loading = loading;
    m_info = info;
    m_loadError = error;
    updateNotice();
}

bool PresetPanel::setCurrentPreset(const QString& id)
{
    const int idx = m_preset->findData(id);
    if (idx < 0) return false;
    m_preset->setCurrentIndex(idx);
    return true;
}

QString PresetPanel::currentPresetId() const { return m_preset->currentData().toString(); }

const doc::Preset* PresetPanel::currentPreset() const
{
    return doc::findPreset(m_presets, currentPresetId().toStdString());
}

void PresetPanel::setTranslateTarget(const QString& language) { m_target->setCurrentText(language); }
QString PresetPanel::translateTarget() const { return m_target->currentText().trimmed(); }
void PresetPanel::setCustomPrompt(const QString& prompt) { m_custom->setPlainText(prompt); }
QString PresetPanel::customPrompt() const { return m_custom->toPlainText().trimmed(); }
void PresetPanel::setFieldNames(const QStringList& names) { m_fields->setText(names.join(QStringLiteral(", "))); }
QStringList PresetPanel::fieldNames() const { return splitFields(m_fields->text()); }

void PresetPanel::onPresetIndexChanged()
{
    updateOptions();
    updateNotice();
    Q_EMIT presetChanged(currentPresetId());
}

void PresetPanel::updateOptions()
{
    const doc::Preset* p = currentPreset();
    const std::string lang = language();
    m_description->setText(p ? qs(p->description.in(lang)) : QString());
    const bool translate = p && !p->targetLanguages.empty();
    const bool fields = p && !p->fields.empty();
    const bool custom = p && p->userPrompt;
    m_target->setVisible(translate);
    m_targetLabel->setVisible(translate);
    m_fields->setVisible(fields);
    m_fieldsLabel->setVisible(fields);
    m_custom->setVisible(custom);
    m_promptLabel->setVisible(custom);
    if (translate) {
        const QString keep = m_target->currentText();
        const QSignalBlocker block(m_target);
        m_target->clear();
        for (const auto& t : p->targetLanguages) m_target->addItem(qs(t.name.in(language())), qs(t.id));
        if (!keep.isEmpty()) m_target->setCurrentText(keep);
    }
    if (fields) {
        const QSignalBlocker block(m_fields);
        m_fields->setText(defaultFieldNames(*p).join(QStringLiteral(", ")));
    }
}

bool PresetPanel::canRun() const
{
    const doc::Preset* p = currentPreset();
    if (!p || !m_loaded) return false;
    if (!p->supportsModel(m_info.model)) return false;
    return !p->userPrompt || !customPrompt().isEmpty();
}

engine::Request PresetPanel::requestTemplate() const
{
    engine::Request r;
    const doc::Preset* p = currentPreset();
    if (!p) return r;
    r.preset = p->id;
    if (p->userPrompt) r.prompt = customPrompt().toStdString();
    if (!p->fields.empty()) {
        const QStringList names = fieldNames();
        if (names != defaultFieldNames(*p)) {
            for (const QString& n : names) r.fieldNames.push_back(n.toStdString());
        }
    }
    if (!p->targetLanguages.empty()) {
        // The combo shows names in the UI language; the preset accepts ids or names in either language.
        const int idx = m_target->findText(m_target->currentText());
        r.targetLanguage = (idx >= 0 ? m_target->itemData(idx).toString() : translateTarget()).toStdString();
    }
    return r;
}

QString PresetPanel::promptPreview() const
{
    const doc::Preset* p = currentPreset();
    if (!p) return {};
    const engine::Request r = requestTemplate();
    doc::PromptArgs args;
    args.fields = r.fieldNames;
    args.targetLanguage = r.targetLanguage;
    args.userPrompt = r.prompt;
    return qs(doc::buildPrompt(*p, args));
}

void PresetPanel::updateNotice()
{
    const doc::Preset* p = currentPreset();
    const bool vlmLoaded = m_loaded && m_info.model.rfind("hunyuan", 0) == 0;
    const QString prompt = promptPreview();
    if (p && m_loaded && !vlmLoaded && !p->fields.empty())
        m_preview->setText(tr("PP-OCRv4 reads the text lines, then fills the fields from their printed labels "
                              "(e.g. %1) and the values to the right or below.")
                               .arg(exampleLabel(*p, language())));
    else if (p && m_loaded && !vlmLoaded)
        m_preview->setText(tr("PP-OCRv4 detects and reads every text line; no prompt is used."));
    else
        m_preview->setText(prompt.isEmpty() ? tr("Prompt: (write one above)") : tr("Prompt: %1").arg(prompt));

    if (m_loading) m_modelState->setText(tr("Loading the model…"));
    else if (!m_loadError.isEmpty()) m_modelState->setText(tr("Not loaded: %1").arg(m_loadError));
    else if (m_loaded) m_modelState->setText(tr("Ready: %1").arg(describeEngine(m_info)));
    else m_modelState->setText(tr("No model loaded."));

    QString notice;
    QString button;
    if (p && m_loaded && !p->supportsModel(m_info.model)) {
        notice = tr("“%1” needs the HunyuanOCR vision-language model, which is not loaded. "
                    "Recognising with it now would fail.")
                     .arg(qs(p->name.in(language())));
        button = m_loadError.isEmpty() && modelChoice() != ModelChoice::Hunyuan ? tr("Use HunyuanOCR")
                                                                                : tr("Settings…");
    } else if (!m_loadError.isEmpty() && modelChoice() == ModelChoice::Hunyuan) {
        notice = tr("HunyuanOCR could not be loaded. Choose its folder in Settings, or download it.");
        button = tr("Settings…");
    } else if (p && p->userPrompt && customPrompt().isEmpty()) {
        notice = tr("Write a prompt for the custom preset.");
    }
    m_notice->setText(notice);
    m_notice->setVisible(!notice.isEmpty());
    m_switchModel->setText(button);
    m_switchModel->setVisible(!button.isEmpty());
    m_rerun->setEnabled(canRun());
}

}  // namespace lector::ui
