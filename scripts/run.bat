@echo off
rem The app launcher's round keys for session-lock (Windows).
rem   [R] rebuild and restart the app now.
rem   [W] wait until every claimed stream is released (status --wait), archive the round into
rem       session-lock\history\<timestamp>\, then rebuild and restart like [R].
rem   [S] show the round's status.   [Q] quit.
rem Non-interactive: scripts\run.bat R ^| W ^| S. Commands come from session-lock\config.json
rem (rebuildCommand, restartCommand). The suite's binaries are found on PATH.
setlocal enabledelayedexpansion
for /f "delims=" %%r in ('git rev-parse --show-toplevel 2^>nul') do set "REPO=%%r"
if "%REPO%"=="" set "REPO=%CD%"
if not "%~1"=="" ( call :key %1 & exit /b !errorlevel! )
:menu
echo.
echo [R] rebuild + restart   [W] wait for the round, archive, restart   [S] status   [Q] quit
choice /c RWSQ /n /m "> "
if errorlevel 4 exit /b 0
if errorlevel 3 ( call :key S & goto menu )
if errorlevel 2 ( call :key W & goto menu )
call :key R
goto menu

:key
if /i "%~1"=="R" goto restart
if /i "%~1"=="S" ( status --repo "%REPO%" & exit /b !errorlevel! )
if /i "%~1"=="W" goto wait
echo run: unknown key "%~1" (R, W, S or Q)
exit /b 2

rem Failures are read with "if errorlevel 1", not "||": some cmd implementations (wine's) run
rem the right side of "||" whatever the exit code.
:wait
echo run: waiting until every claimed stream is released (a lock stale for 60 min counts as finished)
status --repo "%REPO%" --wait --archive
if errorlevel 1 (
  echo run: the wait did not finish; nothing restarted
  exit /b 1
)
goto restart

:restart
for /f "delims=" %%c in ('status --repo "%REPO%" --config-value rebuildCommand') do set "REBUILD=%%c"
for /f "delims=" %%c in ('status --repo "%REPO%" --config-value restartCommand') do set "START=%%c"
echo run: rebuilding: !REBUILD!
pushd "%REPO%"
cmd /c "!REBUILD!"
if errorlevel 1 (
  echo run: rebuild failed; the app was not restarted
  popd
  exit /b 1
)
echo run: starting: !START!
start "app" cmd /c "!START!"
popd
exit /b 0
