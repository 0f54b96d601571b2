// UI language: installs Lector's and Qt's own translators for "en", "zh_CN" or "system" (the
// platform locale), sets the default QLocale (preset names follow it), and lets every widget
// retranslate through QEvent::LanguageChange. GUI thread only.
#pragma once

#include <QString>

namespace lector::ui {

// Returns the language code actually installed ("en" when no translation matched).
QString installLanguage(const QString& setting);
// The language a setting resolves to: "en" or "zh_CN".
QString resolveLanguage(const QString& setting);
// Makes the embedded icons and resources available (static library resources need an explicit init).
void initResources();

}  // namespace lector::ui
