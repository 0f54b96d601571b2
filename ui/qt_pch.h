// Precompiled header of lector_ui and the UI tests: the Qt headers nearly every file includes.
#pragma once
#include <QtCore>
#include <QtGui>
#include <QtWidgets>
