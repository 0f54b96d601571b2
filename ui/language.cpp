#include "ui/language.h"

#include <QCoreApplication>
#include <QLibraryInfo>
#include <QLocale>
#include <QTranslator>

#include <memory>

// Q_INIT_RESOURCE must be used outside any namespace.
static void initLectorResources() { Q_INIT_RESOURCE(resources); }

namespace lector::ui {
namespace {

std::unique_ptr<QTranslator>& appTranslator()
{
    static std::unique_ptr<QTranslator> t;
    return t;
}

std::unique_ptr<QTranslator>& qtTranslator()
{
    static std::unique_ptr<QTranslator> t;
    return t;
}

}  // namespace

void initResources()
{
    static bool done = false;
    if (!done) initLectorResources();
    done = true;
}

QString resolveLanguage(const QString& setting)
{
    if (setting == QLatin1String("zh_CN") || setting == QLatin1String("en")) return setting;
    return QLocale::system().language() == QLocale::Chinese ? QStringLiteral("zh_CN") : QStringLiteral("en");
}

QString installLanguage(const QString& setting)
{
    const QString lang = resolveLanguage(setting);
    for (auto* slot : {&appTranslator(), &qtTranslator()}) {
        if (*slot) {
            QCoreApplication::removeTranslator(slot->get());
            slot->reset();
        }
    }
    QLocale::setDefault(QLocale(lang == QLatin1String("zh_CN") ? QLocale::Chinese : QLocale::English,
                                lang == QLatin1String("zh_CN") ? QLocale::China : QLocale::UnitedStates));
    if (lang == QLatin1String("en")) {
        // Sends LanguageChange so widgets switch back to the source strings.
        QCoreApplication::postEvent(QCoreApplication::instance(), new QEvent(QEvent::LanguageChange));
        return lang;
    }
    auto app = std::make_unique<QTranslator>();
    if (!app->load(QStringLiteral(":/i18n/lector_") + lang)) return QStringLiteral("en");
    QCoreApplication::installTranslator(app.get());
    appTranslator() = std::move(app);
    auto qt = std::make_unique<QTranslator>();
    if (qt->load(QStringLiteral("qtbase_") + lang, QLibraryInfo::path(QLibraryInfo::TranslationsPath))) {
        QCoreApplication::installTranslator(qt.get());
        qtTranslator() = std::move(qt);
    }
    return lang;
}

}  // namespace lector::ui
