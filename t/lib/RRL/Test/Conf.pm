package RRL::Test::Conf;

# nginx configurations of a test file, as methods of its RRL::Test (a
# parent class of it): a template's placeholders expanded into a config
# (expand), and `nginx -t` on one (nginx_t, nginx_t_here). line_of() finds a line of a
# config, for the FILE:LINE of nginx -t's messages.
#
# Placeholders: %%TEST_GLOBALS%% (load_module, daemon, pid, error_log,
# events; put at the top when absent), %%TEST_GLOBALS_HTTP%% (access_log and
# temp paths; put at the start of the http block when absent), %%MODULE%%,
# %%REDIS_PORT%%, %%REDIS_SOCKET%%, %%PORT%% and %%PORT_<n>%% (free ports of
# this instance), %%TESTDIR%% (shared by the file's instances; html/ has an
# index.html), %%NGINX_DIR%% (this instance's own directory).

use strict;
use warnings;

use Carp qw(croak);
use Exporter qw(import);

use RRL::Test::Env qw(nginx_binary nginx_preload);
use RRL::Test::Ports qw(free_port);

our @EXPORT_OK = qw(line_of);

sub globals {
    my ($self, $ndir, %opts) = @_;
    my $g = '';
    $g .= "load_module $self->{module};\n" unless $opts{no_module};
    $g .= "daemon on;\n" unless $opts{template} =~ /^\s*daemon\s/m;
    $g .= "master_process on;\n" unless $opts{template} =~ /^\s*master_process\s/m;
    $g .= "worker_processes 1;\n"
        unless $opts{template} =~ /^\s*worker_processes\s/m;
    $g .= "pid $ndir/nginx.pid;\n";
    $g .= "error_log $ndir/error.log info;\n";
    $g .= "events { worker_connections 1024; }\n"
        unless $opts{template} =~ /^\s*events\s*\{/m;
    return $g;
}

sub globals_http {
    my ($self, $ndir) = @_;
    return "access_log $ndir/access.log;\n"
        . "client_body_temp_path $ndir/client_body_temp;\n"
        . "proxy_temp_path $ndir/proxy_temp;\n"
        . "fastcgi_temp_path $ndir/fastcgi_temp;\n"
        . "uwsgi_temp_path $ndir/uwsgi_temp;\n"
        . "scgi_temp_path $ndir/scgi_temp;\n";
}

# expand($template, $ndir, \%ports, no_module => 1): the config; %ports
# gets the free ports its %%PORT%% placeholders were given ({0} for
# %%PORT%%), and keeps those it has already

sub expand {
    my ($self, $template, $ndir, $ports, %opts) = @_;
    my $c = $template;

    my $g = $self->globals($ndir, %opts, template => $template);
    my $gh = $self->globals_http($ndir);

    $c = "%%TEST_GLOBALS%%\n" . $c unless $c =~ /%%TEST_GLOBALS%%/;
    $c =~ s/^(\s*http\s*\{[^\n]*\n)/$1%%TEST_GLOBALS_HTTP%%\n/m
        unless $c =~ /%%TEST_GLOBALS_HTTP%%/;

    $c =~ s/%%TEST_GLOBALS%%\n?/$g/g;
    $c =~ s/%%TEST_GLOBALS_HTTP%%\n?/$gh/g;
    $c =~ s/%%MODULE%%/$self->{module}/g;
    my $rp = $self->{redis_port} // 6379;
    $c =~ s/%%REDIS_PORT%%/$rp/g;
    my $rs = $self->redis_socket;
    $c =~ s/%%REDIS_SOCKET%%/$rs/g;
    $c =~ s/%%TESTDIR%%/$self->{dir}/g;
    $c =~ s/%%NGINX_DIR%%/$ndir/g;
    $c =~ s{%%PORT(?:_(\d+))?%%}{$ports->{$1 // 0} //= free_port()}ge;

    return $c;
}

# write_conf($dir, $template, \%ports, %opts): the expanded config written
# to $dir/nginx.conf (a new world-readable directory); returns its file and
# its text

sub write_conf {
    my ($self, $dir, $template, $ports, %opts) = @_;

    mkdir $dir or croak "mkdir $dir: $!";
    chmod 0755, $dir;

    my $conf = $self->expand($template, $dir, $ports, %opts);
    my $file = "$dir/nginx.conf";

    open my $fh, '>', $file or croak "$file: $!";
    print $fh $conf;
    close $fh;
    chmod 0644, $file;

    return ($file, $conf);
}

# nginx_t($template): nginx -t on a config; returns ($output, $exit_code,
# $conf_file, $conf_text)

sub nginx_t {
    my ($self, $template, %opts) = @_;

    my $n = $self->{nt}++;
    my $tdir = "$self->{dir}/conftest$n";
    my ($file, $conf) = $self->write_conf($tdir, $template, {}, %opts);

    local $ENV{LD_PRELOAD} = nginx_preload();
    my $out = `@{[nginx_binary()]} -t -p $tdir/ -c $file -e $tdir/error.log 2>&1`;
    my $rc = $? >> 8;

    return ($out, $rc, $file, $conf);
}

# nginx_t_here($template, $want): nginx_t on a config with a line marked
# "# HERE" (the one nginx -t's message names); returns ($output,
# $exit_code, $conf_file, that line's number, $want with FILE, LINE and
# FIRST (the line marked "# FIRST") put in)

sub nginx_t_here {
    my ($self, $template, $want) = @_;
    my ($out, $rc, $file, $text) = $self->nginx_t($template);
    my $line = line_of($text, qr/# HERE/);
    if (defined $want) {
        $want =~ s/FILE/$file/g;
        $want =~ s/LINE/$line/g;
        if ($want =~ /FIRST/) {
            my $first = line_of($text, qr/# FIRST/);
            $want =~ s/FIRST/$first/g;
        }
    }
    return ($out, $rc, $file, $line, $want);
}

# line_of($text, qr/re/, $nth): the 1-based number of the $nth (default 1)
# line of $text that matches

sub line_of {
    my ($text, $re, $nth) = @_;
    $nth //= 1;
    my @lines = split /\n/, $text, -1;
    for my $i (0 .. $#lines) {
        next unless $lines[$i] =~ $re;
        return $i + 1 if --$nth == 0;
    }
    croak "no line matches $re";
}

1;
