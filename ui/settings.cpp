#include "ui/settings.h"

#include <QRegularExpression>

#include <array>
#include <functional>

namespace lector::ui {
namespace {

using Validator = bool (*)(const QVariant&);

struct Spec {
    Settings::Key key;
    const char* name;
    QVariant (*makeDefault)();
    Validator validate;
};

bool oneOf(const QVariant& v, std::initializer_list<const char*> allowed)
{
    if (!v.canConvert<QString>()) return false;
    const QString s = v.toString();
    for (const char* a : allowed) {
        if (s == QLatin1String(a)) return true;
    }
    return false;
}

bool isBool(const QVariant& v)
{
    // QSettings' INI backend hands booleans back as the strings "true"/"false".
    if (v.typeId() == QMetaType::Bool) return true;
    return oneOf(v, {"true", "false", "0", "1"});
}

bool isString(const QVariant& v) { return v.typeId() == QMetaType::QString; }

bool isPresetId(const QVariant& v)
{
    static const QRegularExpression re(QStringLiteral("^[a-z][a-z0-9_-]{0,31}$"));
    return isString(v) && re.match(v.toString()).hasMatch();
}

bool isStringList(const QVariant& v)
{
    return v.typeId() == QMetaType::QStringList || v.typeId() == QMetaType::QString;
}

bool isExtensionList(const QVariant& v)
{
    static const QRegularExpression re(QStringLiteral("^[a-z0-9]{1,8}( [a-z0-9]{1,8})*$"));
    return isString(v) && re.match(v.toString()).hasMatch();
}

bool isBytes(const QVariant& v) { return v.typeId() == QMetaType::QByteArray; }

// The one table: key, storage name, default, validator. Order = Settings::Key order.
const std::array<Spec, static_cast<size_t>(Settings::Key::Count_)> kTable{{
    {Settings::Key::Model, "engine/model", [] { return QVariant(QStringLiteral("ppocr-v4")); },
     [](const QVariant& v) { return oneOf(v, {"ppocr-v4", "hunyuan-ocr"}); }},
    {Settings::Key::Device, "engine/device", [] { return QVariant(QStringLiteral("cpu")); },
     [](const QVariant& v) { return oneOf(v, {"cpu", "cuda"}); }},
    {Settings::Key::Dtype, "engine/dtype", [] { return QVariant(QStringLiteral("auto")); },
     [](const QVariant& v) { return oneOf(v, {"auto", "float16", "bfloat16", "float32"}); }},
    {Settings::Key::HunyuanDir, "engine/hunyuanDir", [] { return QVariant(QString()); }, isString},
    {Settings::Key::DefaultPreset, "ui/defaultPreset", [] { return QVariant(QStringLiteral("text")); },
     isPresetId},
    {Settings::Key::UiLanguage, "ui/language", [] { return QVariant(QStringLiteral("system")); },
     [](const QVariant& v) { return oneOf(v, {"system", "en", "zh_CN"}); }},
    {Settings::Key::AutoCopy, "ui/autoCopy", [] { return QVariant(false); }, isBool},
    {Settings::Key::WatchClipboard, "ui/watchClipboard", [] { return QVariant(false); }, isBool},
    {Settings::Key::ShowOverlay, "ui/showOverlay", [] { return QVariant(true); }, isBool},
    {Settings::Key::TranslateTarget, "ui/translateTarget", [] { return QVariant(QStringLiteral("English")); },
     [](const QVariant& v) { return isString(v) && !v.toString().trimmed().isEmpty(); }},
    {Settings::Key::CustomPrompt, "ui/customPrompt", [] { return QVariant(QString()); }, isString},
    {Settings::Key::RecentFiles, "ui/recentFiles", [] { return QVariant(QStringList()); }, isStringList},
    {Settings::Key::BatchRecursive, "batch/recursive", [] { return QVariant(true); }, isBool},
    {Settings::Key::BatchExtensions, "batch/extensions",
     [] { return QVariant(QStringLiteral("png jpg jpeg bmp tif tiff webp")); }, isExtensionList},
    {Settings::Key::BatchFormat, "batch/format", [] { return QVariant(QStringLiteral("jsonl")); },
     [](const QVariant& v) { return oneOf(v, {"jsonl", "csv", "json", "txt"}); }},
    {Settings::Key::BatchMirrorTree, "batch/mirrorTree", [] { return QVariant(true); }, isBool},
    {Settings::Key::BatchOutputDir, "batch/outputDir", [] { return QVariant(QString()); }, isString},
    {Settings::Key::BatchSourceDir, "batch/sourceDir", [] { return QVariant(QString()); }, isString},
    {Settings::Key::WindowGeometry, "window/geometry", [] { return QVariant(QByteArray()); }, isBytes},
    {Settings::Key::WindowState, "window/state", [] { return QVariant(QByteArray()); }, isBytes},
}};

const Spec& spec(Settings::Key key)
{
    const auto& s = kTable[static_cast<size_t>(key)];
    Q_ASSERT(s.key == key);  // the table is in enum order
    return s;
}

// Converts what the validator accepted into the default's type (INI gives strings for bools).
QVariant normalised(Settings::Key key, const QVariant& v)
{
    const QVariant def = spec(key).makeDefault();
    if (def.typeId() == QMetaType::Bool) {
        if (v.typeId() == QMetaType::Bool) return v;
        const QString s = v.toString();
        return QVariant(s == QLatin1String("true") || s == QLatin1String("1"));
    }
    if (def.typeId() == QMetaType::QStringList) return QVariant(v.toStringList());
    return v;
}

}  // namespace

Settings::Settings(std::unique_ptr<QSettings> store, QObject* parent)
    : QObject(parent), m_store(store ? std::move(store) : std::make_unique<QSettings>())
{
}

Settings::~Settings() { m_store->sync(); }

QVariant Settings::defaultValue(Key key) { return spec(key).makeDefault(); }

bool Settings::isValid(Key key, const QVariant& value) { return spec(key).validate(value); }

QString Settings::storageName(Key key) { return QString::fromLatin1(spec(key).name); }

QVariant Settings::value(Key key) const
{
    const Spec& s = spec(key);
    const QVariant v = m_store->value(QLatin1String(s.name));
    if (!v.isValid() || !s.validate(v)) return s.makeDefault();
    return normalised(key, v);
}

bool Settings::setValue(Key key, const QVariant& value)
{
    const Spec& s = spec(key);
    if (!s.validate(value)) return false;
    const QVariant v = normalised(key, value);
    if (m_store->contains(QLatin1String(s.name)) && this->value(key) == v) return true;
    m_store->setValue(QLatin1String(s.name), v);
    Q_EMIT changed(key);
    return true;
}

void Settings::sync() { m_store->sync(); }

QStringList Settings::batchExtensions() const
{
    return value(Key::BatchExtensions).toString().split(QLatin1Char(' '), Qt::SkipEmptyParts);
}

void Settings::addRecentFile(const QString& path)
{
    QStringList list = recentFiles();
    list.removeAll(path);
    list.prepend(path);
    while (list.size() > kMaxRecentFiles) list.removeLast();
    setValue(Key::RecentFiles, list);
}

QString engineDtype(const QString& settingValue)
{
    return settingValue == QLatin1String("auto") ? QString() : settingValue;
}

}  // namespace lector::ui
