fn main() -> std::process::ExitCode {
    atmc_lab::cli::main()
}
